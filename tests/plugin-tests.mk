# Plugin tests; filled in with the plugin.
