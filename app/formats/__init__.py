"""The prompt and reply formats: the templates a judge is asked with, the reply
layouts it answers in (PocketJudge's JSON and other judges' native text), their
parsers, and cutting an item to fit the model's context."""
