"""The HTML report: profiles of one or more models with their plots, as one self-contained page."""
