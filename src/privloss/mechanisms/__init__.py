"""Mechanisms that are private as implemented; each reports its guarantee as events."""
