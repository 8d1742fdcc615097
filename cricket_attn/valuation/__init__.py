"""What each player is worth, from the ball model: expected (each ball's outcome against an average player's
in the same place) → players (per player, role, season and competition, with intervals by match) →
reliability (does it hold from one season to the next); `cricket-attn-players` is cricket_attn.commands.players."""
