"""An epsilon-greedy agent with restarts, plugged into nslb by an entry point."""
