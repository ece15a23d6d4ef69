"""The watchdog: what every host really runs between deploys (docs/watchdog.md)."""
