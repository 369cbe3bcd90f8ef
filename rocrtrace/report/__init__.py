"""Reporters: render an analysis result (findings, inputs, coverage)."""
