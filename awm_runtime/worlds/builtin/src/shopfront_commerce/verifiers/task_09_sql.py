def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    cat_sql = "SELECT c.id, c.name, c.parent_id, pc.name AS parent_name FROM categories c LEFT JOIN categories pc ON pc.id = c.parent_id ORDER BY c.id"
    prod_sql = ("SELECT p.id, p.name, p.category_id, c.name AS category_name, p.base_price FROM products p "
                "LEFT JOIN categories c ON c.id = p.category_id WHERE p.name = 'Bamboo Cutting Board'")
    moved_sql = "SELECT id, name, category_id, base_price FROM products ORDER BY id"
    before = {r["id"]: r for r in query(initial_db_path, moved_sql)}
    after = {r["id"]: r for r in query(final_db_path, moved_sql)}
    changed = [{"before": before.get(i), "after": r} for i, r in after.items() if before.get(i) != r]
    return {
        "categories_before": query(initial_db_path, cat_sql),
        "categories_after": query(final_db_path, cat_sql),
        "bamboo_before": query(initial_db_path, prod_sql),
        "bamboo_after": query(final_db_path, prod_sql),
        "changed_products": changed,
        "final_answer": final_answer,
    }
