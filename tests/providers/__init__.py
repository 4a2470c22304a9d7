"""Provider adapter tests (a package so helper modules import relatively)."""
