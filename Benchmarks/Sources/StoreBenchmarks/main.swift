// Filled by its issue.
print("not yet measured")
