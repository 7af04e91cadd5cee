def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    sql = ("SELECT r.id, p.name AS product, c.first_name || ' ' || c.last_name AS customer, r.rating, r.title, r.status "
           "FROM product_reviews r JOIN products p ON p.id = r.product_id JOIN customers c ON c.id = r.customer_id "
           "WHERE p.name = 'Ceramic Pour-Over Set' OR (c.first_name = 'Marcus' AND c.last_name = 'Webb') ORDER BY r.id")
    before_ids = [r["id"] for r in query(initial_db_path, "SELECT id FROM product_reviews ORDER BY id")]
    after_ids = [r["id"] for r in query(final_db_path, "SELECT id FROM product_reviews ORDER BY id")]
    return {
        "related_reviews_before": query(initial_db_path, sql),
        "related_reviews_after": query(final_db_path, sql),
        "review_ids_removed": [i for i in before_ids if i not in after_ids],
        "review_ids_added": [i for i in after_ids if i not in before_ids],
        "final_answer": final_answer,
    }
