"""Scheduling: fusion decisions and the memory plan."""
