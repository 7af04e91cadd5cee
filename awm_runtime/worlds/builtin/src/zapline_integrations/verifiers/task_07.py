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

    name = "Calendly Bookings to Slack"
    if rows(initial_db_path, "SELECT id FROM zaps WHERE name = ?", (name,)):
        return {"result": "others"}
    ws = rows(final_db_path, "SELECT id FROM workspaces WHERE name = ?", ("Acme Ops",))
    z = rows(final_db_path, "SELECT * FROM zaps WHERE name = ?", (name,))
    if not ws or len(z) != 1 or z[0]["workspace_id"] != ws[0]["id"]:
        return {"result": "others"}
    z = z[0]
    trig = rows(final_db_path, "SELECT e.key, a.key AS app_key FROM app_events e JOIN apps a ON a.id = e.app_id WHERE e.id = ?", (z["trigger_event_id"],))
    if not trig or trig[0]["app_key"] != "calendly" or trig[0]["key"] != "invitee_created":
        return {"result": "others"}
    tc = rows(final_db_path, "SELECT label FROM connections WHERE id = ?", (z["trigger_connection_id"],))
    if not tc or tc[0]["label"] != "Calendly - Sales Team":
        return {"result": "others"}
    steps = rows(final_db_path, "SELECT s.*, e.key AS event_key, a.key AS app_key, c.label AS conn_label FROM zap_steps s LEFT JOIN app_events e ON e.id = s.app_event_id LEFT JOIN apps a ON a.id = e.app_id LEFT JOIN connections c ON c.id = s.connection_id WHERE s.zap_id = ? ORDER BY s.position", (z["id"],))
    if len(steps) != 1:
        return {"result": "others"}
    s = steps[0]
    if s["step_type"] != "action" or s["app_key"] != "slack" or s["event_key"] != "send_channel_message" or s["conn_label"] != "Slack - Sales":
        return {"result": "others"}
    maps = {m["target_field"].strip().lower(): m["source_expression"] for m in rows(final_db_path, "SELECT target_field, source_expression FROM field_mappings WHERE step_id = ?", (s["id"],))}
    if norm(maps.get("channel")) != "#sales-meetings":
        return {"result": "others"}
    if norm(maps.get("text")) != norm("New meeting booked: {{trigger.invitee_name}} at {{trigger.event_start_time}}"):
        return {"result": "others"}
    if z["status"] != "on":
        return {"result": "others"}
    return {"result": "complete"}
