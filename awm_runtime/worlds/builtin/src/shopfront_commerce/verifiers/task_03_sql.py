def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    sql = "SELECT id, order_number, status, carrier, tracking_number, shipped_at FROM orders WHERE order_number = 'SF-10012'"
    status_sql = "SELECT order_number, status FROM orders ORDER BY id"
    before = {r["order_number"]: r["status"] for r in query(initial_db_path, status_sql)}
    after = {r["order_number"]: r["status"] for r in query(final_db_path, status_sql)}
    return {
        "order_before": query(initial_db_path, sql),
        "order_after": query(final_db_path, sql),
        "status_changes": {k: [before.get(k), v] for k, v in after.items() if before.get(k) != v},
        "final_answer": final_answer,
    }
