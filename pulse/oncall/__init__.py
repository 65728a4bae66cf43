"""On-call: who is on call, pages, escalation until someone acknowledges."""
