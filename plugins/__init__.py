"""voiced built-in plugins (import name voiced_plugins), registered through entry points."""
