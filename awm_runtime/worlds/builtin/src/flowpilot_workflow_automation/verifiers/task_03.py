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

    wf = rows(final_db_path, "SELECT id FROM workflows WHERE name = ?", ("Employee Onboarding",))
    if len(wf) != 1:
        return {"result": "others"}
    wid = wf[0]["id"]
    q = "SELECT * FROM workflow_steps WHERE workflow_id = ? ORDER BY position"
    before = rows(initial_db_path, q, (wid,))
    after = rows(final_db_path, q, (wid,))
    if any(norm(s["name"]) == "wait 1 day" for s in before):
        return {"result": "others"}
    names_b = [s["name"] for s in before]
    names_a = [s["name"] for s in after]
    idx = names_b.index("Schedule orientation")
    expected = names_b[:idx] + ["Wait 1 day"] + names_b[idx:]
    if [norm(n) for n in names_a] != [norm(n) for n in expected]:
        return {"result": "others"}
    if [s["position"] for s in after] != list(range(1, len(after) + 1)):
        return {"result": "others"}
    wait = [s for s in after if norm(s["name"]) == "wait 1 day"][0]
    if wait["action_type"] != "delay":
        return {"result": "others"}
    ok_durations = {"1d", "1 day", "24h", "86400", "86400s", "1440m"}
    vals = [norm(v) for v in cfg(wait["config_json"]).values()]
    if not any(v in ok_durations for v in vals):
        return {"result": "others"}
    wb = [s for s in before if s["name"] == "Send welcome email"][0]
    wa = [s for s in after if s["name"] == "Send welcome email"][0]
    if wa["id"] != wb["id"]:
        return {"result": "others"}
    if int(wa["retry_count"]) != 3 or wa["on_failure"] != "retry":
        return {"result": "others"}
    if cfg(wa["config_json"]) != cfg(wb["config_json"]):
        return {"result": "others"}
    # pre-existing steps keep their ids and configs
    for s in before:
        match = [x for x in after if x["id"] == s["id"]]
        if len(match) != 1 or match[0]["name"] != s["name"]:
            return {"result": "others"}
    return {"result": "complete"}
