def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3
    import re

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    count_sql = ("SELECT COUNT(DISTINCT i.id) FROM issues i JOIN repositories r ON r.id = i.repository_id "
                 "JOIN issue_labels il ON il.issue_id = i.id JOIN labels l ON l.id = il.label_id "
                 "WHERE r.name = 'lumen-api' AND i.state = 'open' AND l.name = 'bug'")
    expected = query(initial_db_path, count_sql)[0][0]
    state_sql = "SELECT id, state FROM issues ORDER BY id"
    label_sql = "SELECT issue_id, label_id FROM issue_labels ORDER BY issue_id, label_id"
    if query(initial_db_path, state_sql) != query(final_db_path, state_sql):
        return {"result": "others"}
    if query(initial_db_path, label_sql) != query(final_db_path, label_sql):
        return {"result": "others"}
    text = (final_answer or "").lower()
    words = {0: "zero", 1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
    cleaned = re.sub(r"#\d+", " ", text)
    cleaned = re.sub(r"v?\d+\.\d+(\.\d+)?", " ", cleaned)
    numbers = [int(n) for n in re.findall(r"\b\d+\b", cleaned)]
    found = expected in numbers or (expected in words and re.search(r"\b" + words[expected] + r"\b", text) is not None)
    if not found:
        return {"result": "others"}
    return {"result": "complete"}
