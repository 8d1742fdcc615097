"""Ball-by-ball cricket outcome prediction over Cricsheet data."""
