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

    q = "SELECT r.id, r.zap_id, r.status FROM zap_runs r ORDER BY r.id"
    if rows(initial_db_path, q) != rows(final_db_path, q):
        return {"result": "others"}
    counts = rows(final_db_path, "SELECT z.name, COUNT(*) AS n FROM zap_runs r JOIN zaps z ON z.id = r.zap_id JOIN workspaces w ON w.id = z.workspace_id WHERE w.name = ? AND r.status = 'error' GROUP BY z.id ORDER BY n DESC", ("Acme Ops",))
    if not counts or (len(counts) > 1 and counts[0]["n"] == counts[1]["n"]):
        return {"result": "others"}
    top = counts[0]
    ans = norm(final_answer)
    if not ans or norm(top["name"]) not in ans:
        return {"result": "others"}
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
    nums = [int(x) for x in re.findall(r"(?<![\d.])\d+(?!\d|\.\d)", ans)]
    if top["n"] in nums or re.search(r"\b" + words.get(top["n"], "@@") + r"\b", ans):
        return {"result": "complete"}
    return {"result": "others"}
