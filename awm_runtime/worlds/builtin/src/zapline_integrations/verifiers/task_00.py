def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3
    import json
    import re

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    def norm(s):
        return re.sub(r"\s+", " ", str(s or "")).strip().lower()

    ws = rows(final_db_path, "SELECT id FROM workspaces WHERE name = ?", ("Acme Ops",))
    slack = rows(final_db_path, "SELECT id FROM apps WHERE key = 'slack'")
    if not ws or not slack:
        return {"result": "others"}
    wid, sid = ws[0]["id"], slack[0]["id"]
    if rows(initial_db_path, "SELECT id FROM connections WHERE label = ?", ("Slack - Support Team",)):
        return {"result": "others"}
    new = rows(final_db_path, "SELECT * FROM connections WHERE label = ?", ("Slack - Support Team",))
    if len(new) != 1:
        return {"result": "others"}
    c = new[0]
    if c["workspace_id"] != wid or c["app_id"] != sid or c["status"] != "active":
        return {"result": "others"}
    if norm(c["account_identifier"]) != "acme-support.slack.com":
        return {"result": "others"}
    zap = rows(final_db_path, "SELECT id FROM zaps WHERE workspace_id = ? AND name = ?", (wid, "New Zendesk Tickets to Slack"))
    if len(zap) != 1:
        return {"result": "others"}
    q = "SELECT s.id, s.position, s.connection_id, s.app_event_id, e.app_id FROM zap_steps s LEFT JOIN app_events e ON e.id = s.app_event_id WHERE s.zap_id = ? ORDER BY s.position"
    before = rows(initial_db_path, q, (zap[0]["id"],))
    after = rows(final_db_path, q, (zap[0]["id"],))
    slack_before = [s for s in before if s["app_id"] == sid]
    slack_after = [s for s in after if s["app_id"] == sid]
    if len(slack_before) != 1 or len(slack_after) != 1 or slack_after[0]["id"] != slack_before[0]["id"]:
        return {"result": "others"}
    if slack_before[0]["connection_id"] == c["id"] or slack_after[0]["connection_id"] != c["id"]:
        return {"result": "others"}
    if slack_after[0]["app_event_id"] != slack_before[0]["app_event_id"]:
        return {"result": "others"}
    others_b = rows(initial_db_path, "SELECT id, connection_id FROM zap_steps WHERE id != ? ORDER BY id", (slack_after[0]["id"],))
    others_a = rows(final_db_path, "SELECT id, connection_id FROM zap_steps WHERE id != ? ORDER BY id", (slack_after[0]["id"],))
    if others_b != others_a:
        return {"result": "others"}
    return {"result": "complete"}
