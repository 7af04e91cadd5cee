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

    q = "SELECT r.id, r.status FROM workflow_runs r JOIN workflows w ON w.id = r.workflow_id WHERE w.name = ? ORDER BY r.id"
    b = rows(initial_db_path, q, ("Nightly Data Warehouse Sync",))
    a = rows(final_db_path, q, ("Nightly Data Warehouse Sync",))
    if not b or a != b:
        return {"result": "others"}
    expected = sum(1 for r in b if r["status"] == "failed")
    words = {0: "zero", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
    ans = norm(final_answer)
    if not ans:
        return {"result": "others"}
    nums = [int(x) for x in re.findall(r"(?<![\d.])\d+(?!\d|\.\d)", ans)]
    if expected in nums or re.search(r"\b" + words.get(expected, "@@") + r"\b", ans):
        return {"result": "complete"}
    return {"result": "others"}
