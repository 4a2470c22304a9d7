"""nbagent's internal leaves: text safety, bounded views of values, images, threads, logs.

Nothing here is public API; the modules may change freely between releases.
"""
