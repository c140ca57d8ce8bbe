from raxdb.server.main import main

main()
