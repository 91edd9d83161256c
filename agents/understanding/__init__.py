"""What the system understands of text: claims checked against evidence, a user's memories,
the facts a passage states, and words as a library reads them, each behind a port."""
