from pulse.cli import main

main()
