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

    def cfg(text):
        try:
            v = json.loads(text or "{}")
            return v if isinstance(v, dict) else {}
        except Exception:
            return {}

    name = "Contract Renewal Reminder"
    if rows(initial_db_path, "SELECT id FROM workflows WHERE name = ?", (name,)):
        return {"result": "others"}
    wf = rows(final_db_path, "SELECT * FROM workflows WHERE name = ?", (name,))
    if len(wf) != 1:
        return {"result": "others"}
    w = wf[0]
    folder = rows(final_db_path, "SELECT id FROM folders WHERE name = ?", ("Legal",))
    team = rows(final_db_path, "SELECT id FROM teams WHERE name = ?", ("Legal",))
    if not folder or not team or w["folder_id"] != folder[0]["id"] or w["team_id"] != team[0]["id"]:
        return {"result": "others"}
    if norm(w["description"]).rstrip(".") != "weekly reminder about contracts expiring within 60 days":
        return {"result": "others"}
    if w["status"] != "active":
        return {"result": "others"}
    steps = rows(final_db_path, "SELECT * FROM workflow_steps WHERE workflow_id = ? ORDER BY position", (w["id"],))
    if len(steps) != 3 or [s["position"] for s in steps] != [1, 2, 3]:
        return {"result": "others"}
    exp = [("fetch expiring contracts", "http_request"), ("any contracts expiring?", "condition"), ("email legal team", "send_email")]
    if [(norm(s["name"]), s["action_type"]) for s in steps] != exp:
        return {"result": "others"}
    c1 = cfg(steps[0]["config_json"])
    if norm(c1.get("url")) != "https://clm.flowpilot.io/api/contracts?expiring_within_days=60":
        return {"result": "others"}
    if "method" in c1 and norm(c1.get("method")) != "get":
        return {"result": "others"}
    c2 = cfg(steps[1]["config_json"])
    if re.sub(r"\s+", "", norm(c2.get("expression"))) != "count>0":
        return {"result": "others"}
    c3 = cfg(steps[2]["config_json"])
    to = c3.get("to")
    to_text = " ".join(to) if isinstance(to, list) else str(to or "")
    if "legal@flowpilot.io" not in to_text.lower() or norm(c3.get("subject")) != "contracts expiring soon":
        return {"result": "others"}
    trig = rows(final_db_path, "SELECT * FROM triggers WHERE workflow_id = ?", (w["id"],))
    if len(trig) != 1:
        return {"result": "others"}
    t = trig[0]
    if norm(t["name"]) != "weekday mornings" or t["trigger_type"] != "schedule" or norm(t["cron_expression"]) != "0 9 * * 1-5":
        return {"result": "others"}
    if t["timezone"] != "Europe/Rome" or int(t["is_enabled"]) != 1:
        return {"result": "others"}
    tags = rows(final_db_path, "SELECT lower(t.name) AS name FROM workflow_tags wt JOIN tags t ON t.id = wt.tag_id WHERE wt.workflow_id = ?", (w["id"],))
    if sorted(r["name"] for r in tags) != ["legal", "reminders"]:
        return {"result": "others"}
    if len(rows(final_db_path, "SELECT id FROM tags WHERE lower(name) = 'reminders'")) != 1:
        return {"result": "others"}
    return {"result": "complete"}
