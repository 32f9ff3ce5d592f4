"""Figures for the book, drawn from saved run outputs."""
