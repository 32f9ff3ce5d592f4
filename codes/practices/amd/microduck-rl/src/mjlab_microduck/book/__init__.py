"""What only the book's notebooks use: results lookup, live runs, tables, plots and prose."""
