"""What every package of nslb has in common (the bottom layer).

May import: nothing of ``nslb_cli``.
"""
