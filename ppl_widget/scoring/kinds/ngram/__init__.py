"""An n-gram model for teaching, and its export for the browser."""
