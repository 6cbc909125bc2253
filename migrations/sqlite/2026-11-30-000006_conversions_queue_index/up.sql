-- The (status, due_at) index made the planner walk every pending row for the
-- sender's by-id statements (`event_id IN (...) AND status = 'pending'`): its
-- cost per batch grew with the queue. Every query of the queue names its site
-- or its ids, so (site_id, status, due_at) and the primary key serve them all.
DROP INDEX conversions_status_due;
