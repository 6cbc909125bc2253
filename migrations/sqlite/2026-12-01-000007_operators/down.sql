DROP TABLE dashboard_signin_failures;
DROP TABLE operator_sessions;
DROP TABLE operators;
