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

    src_name, new_name = "Employee Onboarding", "Contractor Onboarding"
    if rows(initial_db_path, "SELECT id FROM workflows WHERE name = ?", (new_name,)):
        return {"result": "others"}
    src_b = rows(initial_db_path, "SELECT * FROM workflows WHERE name = ?", (src_name,))
    src_a = rows(final_db_path, "SELECT * FROM workflows WHERE name = ?", (src_name,))
    new = rows(final_db_path, "SELECT * FROM workflows WHERE name = ?", (new_name,))
    if len(src_b) != 1 or len(src_a) != 1 or len(new) != 1:
        return {"result": "others"}
    sid, w = src_a[0]["id"], new[0]
    sq = "SELECT name, action_type, config_json, position, on_failure, retry_count FROM workflow_steps WHERE workflow_id = ? ORDER BY position"
    if rows(initial_db_path, sq, (sid,)) != rows(final_db_path, sq, (sid,)):
        return {"result": "others"}
    if src_a[0]["folder_id"] != src_b[0]["folder_id"] or src_a[0]["status"] != src_b[0]["status"]:
        return {"result": "others"}
    src_steps = rows(initial_db_path, sq, (sid,))
    steps = rows(final_db_path, sq, (w["id"],))
    expected_names = [s["name"] for s in src_steps if s["name"] != "Provision laptop"]
    if [s["name"] for s in steps] != expected_names or [s["position"] for s in steps] != list(range(1, len(steps) + 1)):
        return {"result": "others"}
    welcome = [s for s in steps if s["name"] == "Send welcome email"][0]
    wcfg = cfg(welcome["config_json"])
    if str(wcfg.get("subject", "")).strip() != "Welcome aboard, {{input.first_name}}!":
        return {"result": "others"}
    if "{{input.personal_email}}" not in str(wcfg.get("to", "")):
        return {"result": "others"}
    hr = rows(final_db_path, "SELECT id FROM folders WHERE name = ?", ("HR",))
    if rows(initial_db_path, "SELECT id FROM folders WHERE name = ?", ("Contractors",)):
        return {"result": "others"}
    folder = rows(final_db_path, "SELECT * FROM folders WHERE name = ?", ("Contractors",))
    if len(folder) != 1 or not hr or folder[0]["parent_folder_id"] != hr[0]["id"]:
        return {"result": "others"}
    if w["folder_id"] != folder[0]["id"] or w["status"] != "active":
        return {"result": "others"}
    runs = rows(final_db_path, "SELECT * FROM workflow_runs WHERE workflow_id = ? AND status != 'failed'", (w["id"],))
    ok_run = False
    for r in runs:
        inp = cfg(r["input_json"])
        if (norm(inp.get("full_name")) == "rita gomez" and norm(inp.get("first_name")) == "rita"
                and norm(inp.get("email")) == "rita.gomez@flowpilot.io" and norm(inp.get("personal_email")) == "rita.gomez@gmail.com"):
            ok_run = True
    if not ok_run:
        return {"result": "others"}
    if rows(initial_db_path, "SELECT COUNT(*) AS n FROM workflow_runs WHERE workflow_id = ?", (sid,)) != rows(final_db_path, "SELECT COUNT(*) AS n FROM workflow_runs WHERE workflow_id = ?", (sid,)):
        return {"result": "others"}
    return {"result": "complete"}
