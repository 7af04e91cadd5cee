def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    parent = query(initial_db_path, "SELECT id FROM categories WHERE name = 'Home & Kitchen'")
    if len(parent) != 1:
        return {"result": "others"}
    parent_id = parent[0][0]
    cat_sql = "SELECT id, parent_id FROM categories WHERE LOWER(TRIM(name)) = 'kitchen essentials'"
    if query(initial_db_path, cat_sql):
        return {"result": "others"}
    cat = query(final_db_path, cat_sql)
    if len(cat) != 1 or cat[0][1] != parent_id:
        return {"result": "others"}
    new_cat_id = cat[0][0]

    prod_sql = "SELECT id, category_id, base_price FROM products WHERE name = 'Bamboo Cutting Board'"
    before = query(initial_db_path, prod_sql)
    after = query(final_db_path, prod_sql)
    if len(before) != 1 or len(after) != 1:
        return {"result": "others"}
    if after[0][1] != new_cat_id or abs(after[0][2] - 26.0) > 0.005 or abs(before[0][2] - 26.0) < 0.005:
        return {"result": "others"}
    others = "SELECT id, category_id, base_price FROM products WHERE name <> 'Bamboo Cutting Board' ORDER BY id"
    if query(initial_db_path, others) != query(final_db_path, others):
        return {"result": "others"}
    return {"result": "complete"}
