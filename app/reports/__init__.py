"""What a run shows: charts, the dashboard, the leaderboard."""
