"""Names and what they are bound to: scopes, modules and their loader, which assignments reach a
use, what a function returns, and what kind of value an expression is."""
