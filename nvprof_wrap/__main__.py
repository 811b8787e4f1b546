import sys

from nvprof_wrap.cli import main

sys.exit(main())
