"""The compiler: the speaker-graph IR, the rule catalogue (checks), back ends."""
