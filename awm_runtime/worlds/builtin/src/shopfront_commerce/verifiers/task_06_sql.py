def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    approved = ("SELECT p.name, ROUND(AVG(r.rating), 3) AS avg_rating, COUNT(*) AS n FROM products p "
                "JOIN categories c ON c.id = p.category_id JOIN product_reviews r ON r.product_id = p.id "
                "WHERE c.name = 'Audio' AND r.status = 'approved' GROUP BY p.id ORDER BY avg_rating DESC")
    all_status = ("SELECT p.name, ROUND(AVG(r.rating), 3) AS avg_rating, COUNT(*) AS n FROM products p "
                  "JOIN categories c ON c.id = p.category_id JOIN product_reviews r ON r.product_id = p.id "
                  "WHERE c.name = 'Audio' GROUP BY p.id ORDER BY avg_rating DESC")
    review_sql = "SELECT id, status FROM product_reviews ORDER BY id"
    return {
        "approved_ranking": query(initial_db_path, approved),
        "ranking_if_status_ignored": query(initial_db_path, all_status),
        "reviews_unchanged": query(initial_db_path, review_sql) == query(final_db_path, review_sql),
        "final_answer": final_answer,
    }
