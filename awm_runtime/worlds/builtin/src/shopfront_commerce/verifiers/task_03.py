def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    sql = "SELECT status, carrier, tracking_number FROM orders WHERE order_number = 'SF-10012'"
    before = query(initial_db_path, sql)
    after = query(final_db_path, sql)
    if len(before) != 1 or len(after) != 1:
        return {"result": "others"}
    if before[0][0] == "shipped":
        return {"result": "others"}
    status, carrier, tracking = after[0]
    if status != "shipped":
        return {"result": "others"}
    if "ups" not in (carrier or "").lower():
        return {"result": "others"}
    if (tracking or "").replace(" ", "").upper() != "1Z84A9120398471123":
        return {"result": "others"}
    others = "SELECT id, status, tracking_number FROM orders WHERE order_number <> 'SF-10012' ORDER BY id"
    if query(initial_db_path, others) != query(final_db_path, others):
        return {"result": "others"}
    return {"result": "complete"}
