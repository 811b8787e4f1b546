import sys

from nvprof_wrap._entry import main

sys.exit(main())
