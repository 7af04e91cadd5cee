def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    target_sql = ("SELECT r.id FROM product_reviews r JOIN products p ON p.id = r.product_id "
                  "JOIN customers c ON c.id = r.customer_id "
                  "WHERE p.name = 'Ceramic Pour-Over Set' AND c.first_name = 'Marcus' AND c.last_name = 'Webb'")
    before = query(initial_db_path, target_sql)
    if len(before) != 1:
        return {"result": "others"}
    target_id = before[0][0]
    if query(final_db_path, "SELECT id FROM product_reviews WHERE id = ?", (target_id,)):
        return {"result": "others"}
    all_sql = "SELECT id, product_id, customer_id, rating, status FROM product_reviews WHERE id <> ? ORDER BY id"
    if query(initial_db_path, all_sql, (target_id,)) != query(final_db_path, all_sql, (target_id,)):
        return {"result": "others"}
    return {"result": "complete"}
