/*
 * store internals shared by store.c and the backends (not part of the API).
 * A backend's connection and statement structs begin with struct store and
 * struct store_stmt; store.c calls the backend through its ops.
 */
#ifndef STORE_INT_H
#define STORE_INT_H

#include "store/store.h"

struct store_ops {
	int	 (*open)(struct store **, const struct store_conf *, int flags,
		    char **err);
	void	 (*close)(struct store *);
	struct sqlite3 *(*sqlite)(struct store *);
	int	 (*errcode)(struct store *);
	const char *(*errmsg)(struct store *);
	int	 (*err_no)(struct store *);
	int	 (*busy_timeout)(struct store *, int ms);
	int	 (*exec)(struct store *, const char *sql);
	int	 (*changes)(struct store *);
	bool	 (*in_tx)(struct store *);
	int	 (*begin)(struct store *, enum store_tx);
	int	 (*commit)(struct store *);
	int	 (*rollback)(struct store *);
	int	 (*prepare)(struct store *, const char *sql, int flags,
		    struct store_stmt **);
	void	 (*finalize)(struct store_stmt *);
	int	 (*reset)(struct store_stmt *);
	int	 (*bind_int64)(struct store_stmt *, int, int64_t);
	int	 (*bind_text)(struct store_stmt *, int, const char *, int,
		    bool copy);
	int	 (*bind_blob)(struct store_stmt *, int, const void *, int);
	int	 (*bind_null)(struct store_stmt *, int);
	int	 (*step)(struct store_stmt *);
	int	 (*column_count)(struct store_stmt *);
	const char *(*column_name)(struct store_stmt *, int);
	bool	 (*column_is_null)(struct store_stmt *, int);
	int64_t	 (*column_int64)(struct store_stmt *, int);
	const char *(*column_text)(struct store_stmt *, int);
	const void *(*column_blob)(struct store_stmt *, int);
	int	 (*column_bytes)(struct store_stmt *, int);
	/* optional (NULL: the backend has no notifications) */
	int	 (*listen)(struct store *, const char *channel);
	int	 (*notify_fd)(struct store *);
	int	 (*notified)(struct store *);
	unsigned (*session)(struct store *);
	int	 (*answer_timeout)(struct store *, int ms);
};

struct store {
	const struct store_ops	*ops;
	enum store_driver	 driver;
};

struct store_stmt {
	struct store		*store;
};

/* sqlite.c */
extern const struct store_ops store_sqlite_ops;

/* pg.c */
extern const struct store_ops store_pg_ops;

/* store.c: a malloc'd "fmt ..." into *err (if err is not NULL). */
void	 store_seterr(char **err, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

#endif /* STORE_INT_H */
