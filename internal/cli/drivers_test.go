package cli

// cli.Main measures with the engines' drivers that main registers.
import _ "github.com/tlsbench/tlsbench/internal/driver/all"
