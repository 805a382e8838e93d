"""Tests of the durable privacy-budget ledger (privloss.budget)."""
