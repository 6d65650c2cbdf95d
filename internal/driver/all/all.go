// Package all registers every engine's driver with package driver; import
// it for its side effect, as database/sql users import their drivers:
//
//	import _ "github.com/tlsbench/tlsbench/internal/driver/all"
package all

import (
	_ "github.com/tlsbench/tlsbench/internal/driver/httpdrv"  // registers http, https, builtin
	_ "github.com/tlsbench/tlsbench/internal/driver/mongodrv" // registers mongodb
	_ "github.com/tlsbench/tlsbench/internal/driver/mysqldrv" // registers mysql
	_ "github.com/tlsbench/tlsbench/internal/driver/pgdrv"    // registers postgres
	_ "github.com/tlsbench/tlsbench/internal/driver/redisdrv" // registers redis
)
