"""What the tests share: fakes, builders, the extra environments and small readers."""
