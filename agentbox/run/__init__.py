"""A run of anything inside a profile's sandbox, from its record to its cleanup (`lifecycle`)."""
