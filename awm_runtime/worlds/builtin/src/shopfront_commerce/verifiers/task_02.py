def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    sql = "SELECT stock_quantity FROM product_variants WHERE sku = 'AER-BUD-WHT'"
    before = query(initial_db_path, sql)
    after = query(final_db_path, sql)
    if len(before) != 1 or len(after) != 1:
        return {"result": "others"}
    if after[0][0] != before[0][0] + 25:
        return {"result": "others"}
    others_sql = "SELECT id, stock_quantity FROM product_variants WHERE sku <> 'AER-BUD-WHT' ORDER BY id"
    if query(initial_db_path, others_sql) != query(final_db_path, others_sql):
        return {"result": "others"}
    return {"result": "complete"}
