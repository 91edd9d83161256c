"""The policy checks of the gateway chain, one small module each, in chain order."""
