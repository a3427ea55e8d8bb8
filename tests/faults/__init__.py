"""Fault injection: what nslb guarantees when things go wrong — concurrent writers, signals
at random moments, damaged files and caches, full disks, umasks (README: "What nslb
guarantees")."""
