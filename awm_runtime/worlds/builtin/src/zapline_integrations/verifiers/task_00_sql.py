def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    cq = "SELECT c.*, a.name AS app_name FROM connections c JOIN apps a ON a.id = c.app_id WHERE a.key = 'slack' ORDER BY c.id"
    sq = "SELECT s.id, s.position, s.title, s.connection_id FROM zap_steps s JOIN zaps z ON z.id = s.zap_id WHERE z.name = ? ORDER BY s.position"
    return {
        "slack_connections_before": rows(initial_db_path, cq),
        "slack_connections_after": rows(final_db_path, cq),
        "zendesk_to_slack_steps_before": rows(initial_db_path, sq, ("New Zendesk Tickets to Slack",)),
        "zendesk_to_slack_steps_after": rows(final_db_path, sq, ("New Zendesk Tickets to Slack",)),
        "final_answer": final_answer,
    }
