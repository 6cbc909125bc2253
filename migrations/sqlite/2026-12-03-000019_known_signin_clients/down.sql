DROP TABLE operator_known_clients;
