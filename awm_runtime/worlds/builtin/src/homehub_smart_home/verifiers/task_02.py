def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    target = "SELECT a.id FROM automations a JOIN homes h ON h.id = a.home_id WHERE a.name = 'Vacation Lights' AND h.name = 'Lakeside Cabin'"
    before = q(initial_db_path, target)
    after = q(final_db_path, target)
    if len(before) != 1 or after:
        return {"result": "others"}
    target_id = before[0][0]
    rest = "SELECT id, home_id, name, trigger_type, is_enabled FROM automations WHERE id != ? ORDER BY id"
    if q(initial_db_path, rest, (target_id,)) != q(final_db_path, rest, (target_id,)):
        return {"result": "others"}
    return {"result": "complete"}
