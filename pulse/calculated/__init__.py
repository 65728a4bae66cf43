"""Calculated metrics: values derived from other metrics by a formula (`formula`, in mathjs syntax)."""
