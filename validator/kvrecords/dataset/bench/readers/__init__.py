"""Every benchmark result format the dataset reads; importing this package registers them."""
